"""The instruction sets behind this machine's numbers, and a second one for CI's leg that proves the tests hold on
other CPUs (issue 56; docs/TESTING.md, "Every CPU").

torch's CPU kernels pick their code by the machine: MKL's matrix products (x86), oneDNN's, and ATen's own
vectorised loops (AVX-512, AVX2 or plain code). Two implementations of one computation (ours against
transformers, say) round differently under each, so a test that compares them bit for bit holds on one CPU family
only. The lower-bounds check (.ci/lowest) runs the unit tests and Lab 01 under a second instruction set, one
level below the one this run uses, so a test that holds on one family only fails in CI on any machine.

    python tools/isa.py            # one line for the log: the machine, this run's set, the leg's, and whether
                                   # the leg's kernels really round otherwise (a probe product, compared)
    python tools/isa.py --env      # the leg's settings, as arguments to `env` (`-u KNOB` unsets one)

The knobs: MKL_ENABLE_INSTRUCTIONS caps MKL's instruction set on Intel CPUs; MKL_CBWR picks MKL's code path by
name on any x86 CPU (on an AMD EPYC MKL ignores MKL_ENABLE_INSTRUCTIONS: measured here, 2026-11-28, the products'
bits did not move, and MKL_CBWR moved them); ATEN_CPU_CAPABILITY caps ATen's loops (default, avx2, avx512).
On arm64 there is no MKL: only ATEN_CPU_CAPABILITY=default, where torch uses SVE, moves anything.
"""
import os
import platform
import subprocess
import sys

KNOBS = ("MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")
LEVELS = ("SSE4_2", "AVX2", "AVX512")  # x86, low to high
# What the leg sets for a level. MKL_ENABLE_INSTRUCTIONS moves MKL on Intel; MKL_CBWR moves it on any x86 (on an AMD
# EPYC, MKL runs AVX2 code whatever it is told, and MKL_CBWR=AVX2 still moved the products of small batches and the
# lean decoder's logits: the bit-exact test of issue 56 failed under it here); ATen's loops take their own knob.
SETTINGS = {"AVX2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2", "MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"},
            "SSE4_2": {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "MKL_CBWR": "SSE4_2", "ATEN_CPU_CAPABILITY": "default"}}
# Why one level down and not the plainest code at once (MKL_CBWR=COMPATIBLE, ATen's unvectorised loops): a process
# that trains 20 GRPO steps of Lab 01's recipe at 1 thread took 1.03x the time of the AMD EPYC's own kernels one level
# down and 1.43x at the plainest (farm-bench, A/B wall medians of 5 and 3 pairs, a quiet machine, 2026-11-28): the
# plainest would cost CI minutes it cannot spare.


def flags():
    """The CPU's feature flags (/proc/cpuinfo), or an empty set where there is none (macOS, Windows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def machine_level(cpu_flags):
    """The highest of LEVELS the CPU has (x86), or None (arm64 and the rest)."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i686"):
        return None
    if {"avx512f", "avx512bw", "avx512vl"} <= cpu_flags:
        return "AVX512"
    return "AVX2" if "avx2" in cpu_flags else "SSE4_2"


def _rank(value):
    """A knob's value as a place in LEVELS (None where it names none: AUTO, unset). COMPATIBLE and SSE levels
    count as the lowest, ATen's "default" too."""
    value = (value or "").upper()
    if value in ("COMPATIBLE", "DEFAULT") or value.startswith(("SSE", "AVX_", "AVX ")) or value == "AVX":
        return 0
    return 2 if value.startswith("AVX512") else 1 if value.startswith("AVX2") else None


def run_level(cpu_flags, env):
    """The level this run's kernels use: the machine's, capped by any knob already set."""
    best = machine_level(cpu_flags)
    if best is None:
        return None
    caps = [r for r in (_rank(env.get(k)) for k in KNOBS) if r is not None]
    return LEVELS[min([LEVELS.index(best)] + caps)]


def second(env, cpu_flags=None):
    """The leg's settings: one level below this run's (AVX-512 -> AVX2, AVX2 -> SSE4.2); where this run is at the
    lowest already, the machine's own kernels (every knob unset: the value "" stands for unset); on arm64, ATen's
    plain loops against its SVE ones."""
    cpu_flags = flags() if cpu_flags is None else cpu_flags
    level = run_level(cpu_flags, env)
    if level is None:
        return {} if env.get("ATEN_CPU_CAPABILITY", "").lower() == "default" else {"ATEN_CPU_CAPABILITY": "default"}
    if level == "SSE4_2":
        return {k: "" for k in KNOBS if k in env}
    return dict(SETTINGS[LEVELS[LEVELS.index(level) - 1]])


def applied(env, settings):
    """env with the leg's settings applied ("" removes a knob)."""
    out = {k: v for k, v in env.items() if settings.get(k) != ""}
    out.update({k: v for k, v in settings.items() if v})
    return out


# Products of the shapes the course's GPT-2s multiply (rows 1-128, widths 64-256, a vocabulary of 18), and a
# log-softmax over each (ATen's loops): a hash of each, "product/log-softmax".
PROBE = """
import hashlib, torch
torch.manual_seed(0)
torch.set_num_threads(1)
out = []
for n in (1, 2, 3, 4, 7, 13, 16, 37, 64, 128):
    for k in (64, 128, 256):
        for m in (18, 64, 192, 256):
            a, b, c = torch.randn(n, k), torch.randn(k, m), torch.randn(m)
            y = torch.addmm(c, a, b)
            out.append(hashlib.md5(y.numpy().tobytes()).hexdigest()[:8] + "/"
                       + hashlib.md5(y.log_softmax(-1).numpy().tobytes()).hexdigest()[:8])
print(torch.backends.cpu.get_cpu_capability(), *out)
"""


def probe(env):
    """(torch's CPU capability, [a hash per product shape]) computed in a fresh process under env."""
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        return "failed: " + " ".join(out.stderr.strip().splitlines()[-1:]), []
    capability, *hashes = out.stdout.split()
    return capability, hashes


def report():
    env = dict(os.environ)
    here = " ".join(f"{k}={env[k]}" for k in KNOBS if k in env) or "no knob set"
    leg = second(env)
    shown = sorted(f for f in flags() if f.startswith(("avx", "amx", "sse4", "sve", "asimd")))
    (cap_a, a), (cap_b, b) = probe(env), probe(applied(env, leg))
    products = sum(x.split("/")[0] != y.split("/")[0] for x, y in zip(a, b))
    softmaxes = sum(x != y for x, y in zip(a, b))
    verdict = (f"of {len(a)} probe products, {products} round otherwise there (MKL), and {softmaxes} with their "
               f"log-softmax (and ATen)" if softmaxes else
               "WARNING: the probe's products came out bit for bit the same there, so the leg may not exercise "
               "other kernels on this machine")
    forced = " ".join(f"{k}={v}" if v else f"{k} unset" for k, v in leg.items())
    return (f"instruction sets: {platform.machine()} CPU with {' '.join(shown) or 'no flags read'}; this run: "
            f"{here} (torch's kernels: {cap_a}); the second leg: {forced} (torch's kernels: {cap_b}); {verdict}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--env"]:  # for `env -u K1 ... K2=V2 ... command`
        print(" ".join(f"-u {k}" if not v else f"{k}={v}" for k, v in second(dict(os.environ)).items()))
    elif not sys.argv[1:]:
        print(report())
    else:
        sys.exit("usage: python tools/isa.py [--env]")
