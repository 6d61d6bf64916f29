"""Lab 09's widget (what you verify): episode_stepper, a calculator episode token by token; episode_rows, the
sampled episodes, and episode_view, one of them as HTML with what each check pays."""
from utils import checks
from utils.notebook.widgets.common import _SUM, _text


def episode_rows(model, tokenizer, problem, k=8, tool=True, seed=0, max_new_tokens=64):
    """k sampled episodes of `problem` ('a+b'; the scratchpad task's prompt 'a+b:'), with a fresh calculator when
    tool=True: a list of k lists of (token text, who: 'policy' or 'env') in the order written (EOS shown as '<eos>').
    Raises ValueError for a problem that is not 'a+b'."""
    import torch

    from utils.models.policy import sample
    from utils.tasks.tools import Calculator

    checks.model("episode_rows", "model", model)
    checks.tokenizer("episode_rows", "tokenizer", tokenizer)
    m = _SUM.match(problem) if isinstance(problem, str) else None
    if not m:
        raise ValueError(f"episode_rows: problem={checks._short(problem)} must be 'a+b' (two non-negative numbers of "
                         f"up to six digits)")
    k = checks.number("episode_rows", "k", k, lo=1, hi=64, integer=True)
    checks.flag("episode_rows", "tool", tool)
    seed = checks.number("episode_rows", "seed", seed, lo=0, hi=2**63 - 1, integer=True)
    prompt = f"{int(m[1])}+{int(m[2])}:"
    max_new_tokens = checks.number("episode_rows", "max_new_tokens", max_new_tokens, lo=1, hi=10_000, integer=True)
    from utils.models.policy import fits
    fits("episode_rows", "problem", model, tokenizer, [prompt], max_new_tokens)
    env = Calculator(tokenizer, k) if tool else None
    ro = sample(model, tokenizer, [prompt], k=k, max_new_tokens=max_new_tokens,
                generator=torch.Generator().manual_seed(seed), env=env)
    loss = ro.loss_mask if ro.loss_mask is not None else ro.completion_mask
    rows = []
    for i in range(k):
        n = int(ro.completion_mask[i].sum())
        ids = ro.completion_ids[i, :n].tolist()
        rows.append([("<eos>" if t == tokenizer.eos_token_id else tokenizer.decode([t]),
                      "policy" if loss[i, j] else "env") for j, t in enumerate(ids)])
    return rows


def episode_view(tokens, upto, a, b):
    """HTML for one episode (episode_rows' list of (token, who)) shown up to token `upto` (all once upto >= its
    length): the policy's tokens blue (they carry loss), the environment's grey (read, not trained on); once the
    episode is whole, what the gameable check (tool_echo_reward) and the task's check (outcome_reward) pay, and the
    truth a + b."""
    import html

    from utils.verifiers.tools import tool_echo_reward
    from utils.verifiers.traces import outcome_reward

    upto = checks.number("episode_view", "upto", upto, lo=0, integer=True)
    if isinstance(tokens, (str, bytes, dict)) or not isinstance(tokens, (list, tuple)) or not all(
            isinstance(x, (list, tuple)) and len(x) == 2 and isinstance(x[0], str) and x[1] in ("policy", "env")
            for x in tokens):
        raise ValueError(f"episode_view: tokens must be a list of (token text, 'policy' or 'env') pairs, as "
                         f"episode_rows gives, got {checks._short(tokens)}")
    a = checks.number("episode_view", "a", a, lo=0, integer=True)
    b = checks.number("episode_view", "b", b, lo=0, integer=True)
    shown = tokens[:upto]
    style = {"policy": "background:#bbdefb", "env": "background:#e0e0e0;font-style:italic"}
    cells = "".join(f"<span style='{style[who]};padding:1px 2px;margin:0 1px;font-family:monospace'>"
                    f"{html.escape(t) if t.strip() else '&nbsp;'}</span>" for t, who in shown)
    n_env = sum(who == "env" for _, who in shown)
    out = (f"<p><code>{a}+{b}:</code> {cells}</p><p>{len(shown)} of {len(tokens)} tokens: "
           f"<span style='{style['policy']}'>policy</span> {len(shown) - n_env} (carry loss), "
           f"<span style='{style['env']}'>calculator</span> {n_env} (read, no loss)</p>")
    if upto >= len(tokens):
        text = "".join(t for t, _ in tokens if t != "<eos>")
        echo, truth = tool_echo_reward([text])[0], outcome_reward([text], [str(a + b)])[0]
        out += (f"<table><tr><th>check</th><th>pays</th></tr><tr><td>the answer repeats the calculator's reply "
                f"(gameable)</td><td>{echo:.0f}</td></tr><tr><td>the answer is {a + b} (the task)</td>"
                f"<td>{truth:.0f}</td></tr></table>")
        if echo != truth:
            out += "<p><b>The two checks disagree on this episode.</b></p>"
    return out


def episode_stepper(model, tokenizer, default_problem="47815+2769", k=8, tool=True,
                    max_new_tokens=64):
    """Lab 09: step through a calculator episode token by token. Type a problem 'a+b', choose one of k sampled
    episodes and the calculator on or off (tool: on at the start), and move the slider: the policy's tokens, the
    calculator's answer and, at the end, what each check pays. Returns the widget."""
    import ipywidgets as w

    checks.model("episode_stepper", "model", model)
    checks.tokenizer("episode_stepper", "tokenizer", tokenizer)
    _text("episode_stepper", "default_problem", default_problem)
    k = checks.number("episode_stepper", "k", k, lo=1, hi=64, integer=True)
    checks.flag("episode_stepper", "tool", tool)
    max_new_tokens = checks.number("episode_stepper", "max_new_tokens", max_new_tokens, lo=1, hi=10_000, integer=True)
    prob = w.Text(value=default_problem, description="Problem:", continuous_update=False)
    which = w.IntSlider(value=0, min=0, max=k - 1, description="Episode:")
    tool = w.Checkbox(value=tool, description="calculator on")
    step = w.IntSlider(value=64, min=0, max=64, description="Token:")
    out = w.HTML()
    state = {}

    def resample(_=None):
        m = _SUM.match(prob.value or "")
        if not m:
            out.value = "<b style='color:#b00'>type a problem like 47815+2769</b>"
            return
        state["rows"] = episode_rows(model, tokenizer, prob.value, k=k, tool=tool.value,
                                     max_new_tokens=max_new_tokens)
        state["ab"] = int(m[1]), int(m[2])
        show()

    def show(_=None):
        if "rows" not in state:
            return
        tokens = state["rows"][which.value]
        step.max = len(tokens)
        out.value = episode_view(tokens, min(step.value, len(tokens)), *state["ab"])

    prob.observe(resample, names="value")
    tool.observe(resample, names="value")
    which.observe(show, names="value")
    step.observe(show, names="value")
    resample()
    return w.VBox([w.HBox([prob, tool]), which, step, out])
