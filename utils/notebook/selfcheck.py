"""The self-check at the end of each lab: a few questions with immediate feedback, to see whether the lab's idea
landed. One list per lab (QUESTIONS); self_check("01") shows them as widgets (JupyterLab, Colab, the browser
test), and answer() is the rule the widget applies, so the feedback is tested without a browser."""
from utils import checks

# lab: [(question, options, index of the right option, why)]
QUESTIONS = {
    "01": [
        ("A group of 4 completions scores [1, 0, 0, 0]. Before any std scaling, what advantage does the right one "
         "get?", ["1.0", "0.75", "0.25", "0"], 1,
         "The baseline is the group's mean, 0.25: 1 - 0.25 = 0.75. The three wrong ones get -0.25 each."),
        ("All 8 completions of a prompt are right. What does this group add to the policy gradient?",
         ["the largest push towards its answer", "nothing: every advantage is 0", "a push away from its answer"], 1,
         "Every reward equals the mean, so every advantage is 0: a group whose rewards are all alike teaches nothing."),
        ("Where does GRPO get the baseline that PPO gets from a value network?",
         ["from the group of completions of the same prompt", "from a frozen reference model",
          "from the verifier's confidence"], 0,
         "GRPO samples a group per prompt and uses the group's mean reward as the baseline, so no critic is trained."),
    ],
    "02": [
        ("A verifier pays 1 when the right answer appears anywhere in the completion. What can a policy learn?",
         ["nothing it would not learn anyway", "to write many numbers, one of which is often right",
          "to answer more briefly"], 1,
         "The verifier's false positives are the policy's target: listing candidates earns reward without "
         "solving the problem."),
        ("The training reward climbs while held-out accuracy under a strict verifier stays flat or falls. What is "
         "the likeliest reading?", ["the model is learning the task slowly", "the policy is exploiting the "
                                    "training verifier", "the held-out set is too hard"], 1,
         "A reward that rises while a trusted metric does not is the signature of a hole being exploited: watch "
         "a second, trusted metric whenever you train against a proxy."),
        ("Why are model-written SQL and code run behind the operating system's isolation, not a hook inside the "
         "process?", ["it is faster", "a hook inside the process can be taken down by the code it guards",
                      "the verifier needs the network"], 1,
         "Untrusted code can undo whatever runs in its own process; a wall the OS builds (namespaces, its own "
         "filesystem view) it cannot reach."),
    ],
    "03": [
        ("What does a random-reward control keep the same as the real run?",
         ["everything but the information in the reward: same model, steps, batch and reward rate",
          "only the model", "only the number of steps"], 0,
         "A control changes one thing: the reward carries no information about the answer, at a matched rate."),
        ("A random reward raises accuracy as much as the real one. What follows?",
         ["the verifier taught the task", "the gain is no evidence that the reward taught anything",
          "random rewards are better"], 1,
         "If noise does as well, the gain came from the procedure (format, sampling, sharpening), not from the "
         "verifier's signal."),
        ("On-policy (one update per batch), what is the expected gradient of a reward that ignores the answer?",
         ["zero", "positive", "negative"], 0,
         "Its advantage is uncorrelated with what was sampled, so it averages to zero; several updates per batch "
         "break that."),
    ],
    "04": [
        ("Which signals show a policy collapsing?",
         ["falling token entropy and fewer distinct answers per group", "a rising loss",
          "a falling learning rate"], 0,
         "Collapse narrows what the policy writes: entropy and distinct answers fall, more groups score alike."),
        ("A training run's reward keeps rising while entropy falls fast. Is that good news?",
         ["yes: the reward is what counts", "not by itself: check held-out accuracy and pass@k",
          "yes, if the loss is near 0"], 1,
         "A rising training reward was the collapsing run's loudest and most misleading signal; held-out numbers "
         "decide."),
        ("Why is the entropy threshold a ratio to the run's own start, not a fixed number of nats?",
         ["ratios are easier to compute", "what counts as low entropy depends on the task and the base model",
          "entropy has no units"], 1,
         "Answer length, vocabulary and the base model set the scale, so a rule relative to the start carries "
         "over to the next run."),
    ],
    "05": [
        ("With n = 4 samples of which c = 1 is right, what is the unbiased pass@2?",
         ["0.25", "0.4375", "0.5", "0.75"], 2,
         "1 - C(3, 2) / C(4, 2) = 1 - 3/6 = 0.5: the chance that 2 of the 4, drawn without replacement, include "
         "the right one."),
        ("RL raises pass@1 while pass@256 stays level with the base model's. What does that suggest?",
         ["new capability", "the policy finds faster what the base model could already reach",
          "pass@256 is broken"], 1,
         "At large k the base model reaches the same answers: RL compressed its coverage into fewer samples."),
        ("Why put a guessing baseline beside large-k pass@k on short answers?",
         ["to make the plot prettier", "with enough tries a guesser also reaches high pass@k",
          "guessing is the course's fourth verifier"], 1,
         "Short answers can be hit by chance at large k; judge pass@k where a guesser stays low."),
    ],
    "06": [
        ("A reward that checks each step is a true sum, whatever the problem, is open to which exploit?",
         ["writing true sums that have nothing to do with the problem", "writing shorter answers",
          "none: true sums are always right"], 0,
         "A check that does not look at the problem can be earned without solving it, and was gamed outright."),
        ("What does CoT-pass require?", ["a right answer", "a well-formed trace",
                                         "a right answer and every step right"], 2,
         "CoT-pass counts a completion only when the answer and all of its working are right."),
        ("Under the 'grpo' aggregation, how much does one token of a long completion weigh against one token of a "
         "short one?", ["more", "the same", "less"], 2,
         "'grpo' averages each completion over its own length, so every completion weighs the same in total and "
         "a long one's tokens each count less; 'dapo' and 'dr_grpo' weigh every token alike."),
    ],
    "07": [
        ("A prompt's pass rate is 0.5. What is the chance a group of 8 samples is all alike (no signal)?",
         ["about 0.008", "0.5", "about 0.25"], 0,
         "0.5^8 + 0.5^8 = 2/256, about 0.008; at a pass rate of 0.9 it is already 0.43."),
        ("Two data choices are compared. What must be equal for the comparison to mean anything?",
         ["the number of steps", "the compute: completions sampled (or seconds), and the difficulty mix",
          "the learning rate only"], 1,
         "A choice that samples more per step (dynamic sampling, say) wins per step for free; count completions."),
        ("A sigmoid fitted to a run's first half forecasts the rest. What should it be compared with before its "
         "asymptote is read?", ["nothing: the fit's rmse is enough", "a straight line in log compute, and "
                                "'nothing changes'", "a bigger model's curve"], 1,
         "A curve earns its parameters only by beating the simplest forecasts; here a line did as well on most "
         "runs."),
    ],
    "08": [
        ("Without gradient checkpointing, what dominates a real model's GRPO step memory at 64 x 304 tokens?",
         ["the weights", "the activations", "the optimizer state"], 1,
         "Activations grow with batch x length x layers: tens of GiB here, which is why TRL checkpoints by default."),
        ("Why does a LoRA run need no second copy of the model for the KL's reference?",
         ["the reference is not needed with LoRA", "switching the adapter off gives back the base model",
          "TRL downloads it again"], 1,
         "The base weights stay frozen, so the model with its adapter switched off is the reference."),
        ("A run's KL to the reference stays near 1e-9 while the reward looks normal. What is wrong?",
         ["nothing", "the policy is not moving: learning rate far too low or nothing trainable",
          "the verifier passes everything"], 1,
         "A KL that never leaves 0 says the weights are not changing: check the learning rate and that the "
         "optimizer holds the trainable parameters."),
    ],
    "09": [
        ("A model is fine-tuned on its own samples, and a second copy only on the samples a verifier passed. Which "
         "loop lets information in that the model did not already have?",
         ["both: each trains on new text", "the verified one: the verifier knows which answers are right",
          "neither: both only see the model's own text"], 1,
         "Both train on the model's own text, but the filter is chosen by something outside the model. The "
         "unchecked loop can only re-weight what the model already wrote."),
        ("In a calculator episode, the policy wrote '?478+356=' and the calculator appended '834 '. Which tokens "
         "carry the policy-gradient loss?",
         ["all of them: the model reads them all", "the policy's tokens only; the calculator's are read but not "
                                                   "trained on", "only the final answer"], 1,
         "The policy did not choose the calculator's tokens, so no gradient may push toward or away from them: "
         "they are in completion_mask and out of loss_mask."),
        ("A check pays an episode when its answer repeats the calculator's reply. What can RL learn from it that "
         "the task does not want?",
         ["nothing: the calculator is always right", "to call the calculator and copy its reply, whether or not "
                                                      "the call was the problem's", "to stop calling the tool"], 1,
         "The check reads the transcript, not the task: a miscopied operand gives a wrong sum that is echoed and "
         "paid. The fix is a check that knows the problem."),
    ],
    "10": [
        ("A learner trains on a batch its sampler wrote 4 steps ago, with one update a batch and no importance-"
         "sampling correction. What does the clipped loss divide each token's probability by?",
         ["the probability under the policy of this step", "the probability under the sampler that wrote it",
          "the reference model's probability"], 1,
         "The 'old' policy of the ratio is the behaviour policy, the one that sampled: its distance from the learner "
         "is the staleness, and the clip bounds it."),
        ("With four updates on each stale batch, what does a correction such as token_truncate add?",
         ["nothing: the clip already does it", "a clip against the policy before this batch's first update, with "
                                               "the sampler's mismatch moved into a capped weight",
          "a KL penalty to the sampler"], 1,
         "The clip then bounds how far the updates on this batch move the policy (decoupled PPO), and the weight "
         "corrects for the sampler being older; uncorrected, the clip is spent on the staleness alone."),
        ("A bfloat16 sampler and a float32 learner share the same weights. Is the batch on-policy?",
         ["yes: same weights, same policy", "not exactly: the two compute other probabilities, so the ratio is not 1",
          "only if the batch is small"], 1,
         "Precision and kernels change the numbers: the training-inference mismatch, measured here as a mean "
         "|log ratio| above 0 at lag 0."),
    ],
    "11": [
        ("RL against a learned judge: the judge's mean score of the policy's samples climbs. What tells you whether "
         "the policy got better or the judge is being gamed?",
         ["the judge's score on the training batches", "a rule verifier's pass rate and the judge's false-positive "
                                                       "rate on fresh held-out samples",
          "the training loss"], 1,
         "The judge's own score is the proxy being optimised: only a measurement the policy is not trained on, with "
         "the truth beside it, can show the two coming apart."),
        ("A checker runs `assert solve(0) == 57` in the candidate's own script and passes it if the script exits "
         "0. Which change stops `lambda x: exit(0)`?",
         ["more asserts on more inputs in the same script", "a trusted harness that returns solve's outputs and "
                                                            "compares them in the parent",
          "a shorter timeout"], 1,
         "Any check whose verdict the candidate's code can write (an exit code, a printed line) is a check the "
         "candidate can pass without solving: more asserts in the same script are skipped by the same exit."),
        ("A policy pays off only after a trigger. An evaluation on clean prompts finds nothing. Which probe can find "
         "the trigger without knowing what the behaviour is?",
         ["the pass rate on clean prompts", "comparing the policy's answers with a reference model's across "
                                            "candidate triggers", "reading the reward function's code"], 1,
         "A shift from the reference's answers needs no idea of the behaviour, only of where to look: it finds a "
         "trigger in the family of candidates it tries, and nothing outside it."),
    ],
}


def _lab(where, lab):
    if not isinstance(lab, str) or lab not in QUESTIONS:
        raise ValueError(f"{where}: lab={checks._short(lab)}: the self-checks are for labs {sorted(QUESTIONS)}")


def answer(lab, i, choice):
    """(right: bool, feedback text) for option `choice` of question i of `lab`."""
    _lab("answer", lab)
    i = checks.number("answer", "i", i, lo=0, hi=len(QUESTIONS[lab]) - 1, integer=True)
    question, options, right, why = QUESTIONS[lab][i]
    if not isinstance(choice, int) or isinstance(choice, bool) or not 0 <= choice < len(options):
        raise ValueError(f"choice={choice!r}: pick one of options 0..{len(options) - 1}")
    return choice == right, ("Right. " if choice == right else "Not quite. ") + why


def self_check(lab):
    """The lab's questions as widgets: pick an option, press Check, read why. Returns the widget (display it as
    a cell's last line)."""
    import ipywidgets as w

    _lab("self_check", lab)
    rows = []
    for i, (question, options, _, _) in enumerate(QUESTIONS[lab]):
        pick = w.RadioButtons(options=[(o, k) for k, o in enumerate(options)], value=None,
                              layout=w.Layout(width="auto"))
        button = w.Button(description="Check", button_style="info")
        feedback = w.HTML("")

        def check(_, i=i, pick=pick, feedback=feedback):
            if pick.value is None:
                feedback.value = "<i>Pick an answer first.</i>"
                return
            right, text = answer(lab, i, pick.value)
            color = "#1a7f37" if right else "#b35900"
            feedback.value = f'<span style="color:{color}" class="rlvr-selfcheck-feedback">{text}</span>'
        button.on_click(check)
        rows.append(w.VBox([w.HTML(f"<b>{i + 1}. {question}</b>"), pick, w.HBox([button, feedback])]))
    box = w.VBox(rows)
    box.add_class("rlvr-selfcheck")   # the browser test finds it by this
    return box
