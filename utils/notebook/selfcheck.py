"""The self-check at the end of each lab: a few questions with immediate feedback, to see whether the lab's idea
landed. One list per lab (QUESTIONS), each option with the reason it is right or wrong. Two ways to answer:
self_check("01") shows the questions as widgets (JupyterLab, Colab's ipywidgets 7 and 8, the browser test), and
markdown("01") writes the same questions with each answer folded under a <details> tag, the lab's "## Check
yourself" cell, which a notebook viewer shows with no kernel (tools/make_labs.py writes it into every solution).

The options are shown in a seeded order per question (shown()), so the right one sits in no fixed place;
answer() is the rule the widget applies, so the feedback is tested without a browser (tests/test_selfcheck.py
also checks that neither the position nor the length of an option gives the answer away)."""
import html
import random
import re
import textwrap

from utils import checks

# lab: [(question, [(option, why), ...])]: the right option FIRST, as written here; shown() shuffles them.
# Every wrong option is a mistake a learner could make, and its `why` says what it gets wrong.
QUESTIONS = {
    "01": [
        ("A group of 4 completions scores [1, 0, 0, 0]. Before any std scaling, what advantage does the right one "
         "get?", [
             ("0.75", "The baseline is the group's mean, 0.25: 1 - 0.25 = 0.75. The three wrong ones get -0.25 each."),
             ("1.0", "1.0 is its reward. GRPO subtracts the group's mean reward, 0.25, first: the advantage says how "
                     "much better than the group's usual answer this one was."),
             ("0.25", "0.25 is the group's mean, the baseline itself; the advantage is the reward minus it: "
                      "1 - 0.25 = 0.75."),
             ("-0.25", "-0.25 is what each of the three wrong completions gets (0 - 0.25); the right one gets "
                       "1 - 0.25 = 0.75."),
         ]),
        ("All 8 completions of a prompt are right. What does this group add to the policy gradient?", [
            ("nothing: every advantage is 0", "Every reward equals the group's mean, so every advantage is 0: a "
             "group whose rewards are all alike teaches nothing, however good it is."),
            ("the strongest push towards its answer", "It looks like the best case, but the signal is relative: with "
             "no worse answer in the group there is nothing to prefer, so every advantage is 0."),
            ("a small push, scaled by the group's std", "Before scaling, every advantage is already 0 (each reward "
             "equals the mean), and the std of eight equal rewards is 0 too: the course's scaling leaves 0 as 0."),
        ]),
        ("Where does GRPO get the baseline that PPO gets from a value network?", [
            ("the mean reward of its group", "GRPO samples a group per prompt and uses the group's mean reward as "
             "the baseline, so no critic is trained and each prompt gets a baseline of its own."),
            ("the frozen reference model", "The reference model enters only the KL penalty (and Lab 01 runs with "
             "beta = 0); it says nothing about how good an answer is."),
            ("a running mean of past rewards", "That is REINFORCE's classic baseline, and it ignores how hard this "
             "prompt is. GRPO's baseline is the mean reward of this prompt's own group, measured now."),
        ]),
    ],
    "02": [
        ("A verifier pays 1 when the right answer appears anywhere in the completion. A policy that sometimes "
         "writes more than one number trains against it. What can it learn?", [
             ("to write several numbers, one of them often right", "The verifier's false positives are the policy's "
              "target: listing candidates earns reward without solving the problem."),
             ("nothing harmful: a right answer is still required", "The right answer must appear, but not alone: a "
              "completion listing 56, 66 and 76 is paid for 37+29. A hole in what a verifier accepts is what RL "
              "finds."),
             ("to drop extra numbers, since they cost reward", "Extra numbers cost nothing under this verifier; they "
              "only add chances that one is right. A check that reads only the last number, or charges for wrong "
              "ones, would teach brevity."),
         ]),
        ("The training reward climbs while held-out accuracy under a strict verifier stays flat or falls. What is "
         "the likeliest reading?", [
             ("the policy is exploiting the training verifier", "A reward that rises while a trusted metric does not "
              "is the signature of a hole being exploited: watch a second, trusted metric whenever you train against "
              "a proxy."),
             ("it is learning; held-out accuracy lags and will follow",
              "In a healthy run held-out accuracy climbs with "
              "the reward (Lab 01). Lab 02's last-digit run's reward rose while held-out accuracy fell below the base "
              "model's: a gap that widens is not a lag."),
             ("the held-out problems are harder than the training ones", "Both splits come from one generator, and the "
              "same held-out set rose under the strict verifier's run: difficulty does not explain a gap that opens "
              "during training."),
         ]),
        ("Why do model-written SQL and code run behind the operating system's isolation, not behind a hook inside "
         "the process?", [
             ("code can take down a hook in its own process", "Untrusted code can undo whatever runs in its own "
              "process (Lab 02's audit hook fell to a traceback trick); a wall the OS builds (namespaces, its own "
              "filesystem view) it cannot reach."),
             ("a hook would do, but it slows every call down", "Speed is not the reason. A hook runs where the "
              "candidate's code runs, so that code can remove it, and in Lab 02 it did: only the wall the OS "
              "built held."),
             ("the OS wall also checks whether the answer is right", "The wall only keeps the code from reaching "
              "things (files, the network, the expected answers). Judging stays with the harness, outside the "
              "sandbox."),
         ]),
    ],
    "03": [
        ("What does a random-reward control keep the same as the real run?", [
            ("everything but what the reward knows, its rate included", "A control changes one thing: the reward "
             "carries no information about the answer, at the real verifier's rate p, so a difference between the "
             "runs is the verifier's information."),
            ("everything, but it pays every completion a reward of 1", "A reward that pays everything gives every "
             "group zero spread, so nothing is trained at all and nothing is controlled for. The control pays at "
             "the verifier's rate p, at random."),
            ("the model and the prompts, at whatever rate it pays", "A different rate changes two things at once: how "
             "often a group has any spread, and what is paid for. Matching p (section 3) leaves the reward's "
             "information the only difference."),
        ]),
        ("A random reward raises accuracy as much as the real one. What follows?", [
            ("the gain is no evidence that the verifier taught anything", "If noise does as well, the gain came from "
             "the procedure (format, sampling, sharpening) or from what the model already knew, not from the "
             "verifier's signal."),
            ("both taught the task: the model learns from any reward", "A random reward carries no information about "
             "the answer, so it cannot teach the task; a gain it matches comes from elsewhere, such as answers the "
             "model had memorised (the contamination account, arXiv 2507.10532)."),
            ("a random reward is a cheap substitute for a verifier", "It raises numbers only where something else does "
             "the work. On Lab 03's clean task it cost 20-24 points at the lab's learning rate and was neutral at a "
             "tenth of it."),
        ]),
        ("On-policy (one update per batch), what is the expected gradient of a reward that ignores the answer?", [
            ("zero", "Its advantage is uncorrelated with what was sampled, so it averages to zero; several updates "
             "per batch (through the clip) break that."),
            ("positive: it reinforces what the model already prefers", "That is the clipping bias, which needs several "
             "updates per batch. With one update the ratio is 1, the clip never binds, and an advantage uncorrelated "
             "with the sample averages to zero."),
            ("negative: noise in the reward always degrades a model", "Its expectation is zero. Single steps still "
             "move the model at random: at lr 1e-4 that cost Lab 03's run 20-24 points, and at a ten times smaller "
             "rate the same reward was neutral."),
        ]),
    ],
    "04": [
        ("Which signals show a policy collapsing?", [
            ("entropy and distinct answers per group falling", "Collapse narrows what the policy writes: entropy and "
             "distinct answers fall, and more groups score alike (zero spread)."),
            ("the loss moving away from zero", "GRPO's loss sits near 0 in a healthy run as well (its advantages "
             "average to zero), so its value says little about health; Lab 08 lists a loss near 0 as normal."),
            ("the training reward falling", "The collapsing run's training reward rose, by about 50 points on its 32 "
             "prompts: collapse hides behind a rising reward, which is why held-out numbers decide."),
        ]),
        ("A run's training reward keeps rising while entropy falls fast. Is that good news?", [
            ("not by itself: check held-out accuracy and pass@k", "A rising training reward was the collapsing run's "
             "loudest and most misleading signal: it gained about 50 points on its 32 prompts and lost 13-16 on "
             "unseen ones."),
            ("yes: the reward is the objective, and it is rising", "The reward is measured on the prompts being "
             "trained on. The collapsing run's rose fastest of all while its test accuracy fell: a training reward "
             "cannot tell learning from memorising."),
            ("no: a falling entropy always means a broken run", "Entropy falls in healthy runs too (Lab 03's "
             "true-reward runs went from 0.578 to about 0.47 nats while gaining about 11 points); held-out numbers "
             "decide, not entropy alone."),
        ]),
        ("Why is the health check's entropy threshold a ratio to the run's own start, not a fixed number of nats?", [
            ("what counts as low depends on the task and model", "Answer length, the number of plausible answers and "
             "the base model set the scale, so a rule relative to the start, written before the run, carries over "
             "to the next one."),
            ("entropy in nats changes with the tokenizer, so no rule works", "It does change with the tokenizer and "
             "the task, which is exactly why the threshold is relative: a ratio to the run's own start works on any "
             "of them."),
            ("a fixed floor would flag every run at its very start", "The runs start far above any sensible floor "
             "(about 0.6 nats here). The trouble with a fixed floor is the other way round: chosen with one run in "
             "view, it stopped flagging that recipe on another machine."),
        ]),
    ],
    "05": [
        ("With n = 4 samples of which c = 1 is right, what is the unbiased pass@2?", [
            ("0.5", "1 - C(3, 2) / C(4, 2) = 1 - 3/6 = 0.5: the chance that 2 of the 4, drawn without replacement, "
             "include the right one."),
            ("0.4375", "That is the plug-in estimate 1 - (1 - 1/4)^2, which draws with replacement and is biased low "
             "for every k above 1 (section 8)."),
            ("0.25", "0.25 is c / n, the pass@1. Two tries out of the four include the right one more often: "
             "1 - C(3, 2) / C(4, 2) = 0.5."),
        ]),
        ("RL raises pass@1 while pass@256 stays level with the base model's. What does that suggest?", [
            ("it finds sooner what the base model could already reach", "At large k the base model reaches the same "
             "answers: RL compressed its coverage into fewer samples."),
            ("new capability, since pass@1 rose", "pass@1 rises with compression too (sharpening, re-ranking); new "
             "capability would show as a gain at a k where guessing stays low."),
            ("lost capability, since the gain did not reach large k", "Capability is lost when pass@k falls at large "
             "k, as the collapsed run's did (35-40 points at k = 256); a level pass@256 means kept, not lost."),
        ]),
        ("Why put a guessing baseline beside large-k pass@k on short answers?", [
            ("with enough tries, a guesser also reaches high pass@k", "Short answers can be hit by chance at large k "
             "(a guesser told the answer's length reached 0.79 at k = 256): judge pass@k where a guesser stays low."),
            ("to measure how often the model itself guesses",
             "The baseline is not the model but a program that guesses "
             "numbers of the answer's length: it shows what k tries buy with no skill at all."),
            ("to check that the strict verifier rejects guesses", "A right guess is a right answer, and the verifier "
             "pays it either way. The baseline shows that at large k one right answer among many tries says little "
             "about skill."),
        ]),
    ],
    "06": [
        ("A reward that checks each step is a true sum, whatever the problem, is open to which exploit?", [
            ("true sums that have nothing to do with the problem", "A check that does not look at the problem can be "
             "earned without solving it: 'true sums, wrong digits' scored 1.00 under it."),
            ("padding the trace with extra right steps", "It pays the share of true sums, so padding with more true "
             "sums earns nothing more (padding is what the length-paying reward bred); sums that ignore the problem "
             "earn it all."),
            ("none: a true sum is always a right step", "A sum can be true and still not the column's: 1+1+0=2 is true "
             "in a trace of 478+356 and is no step of it. The check never reads the problem."),
        ]),
        ("What does CoT-pass require?", [
            ("a right answer and every step right", "CoT-pass (chain-of-thought pass) counts a completion only when "
             "its answer and all of its working are right."),
            ("a right answer", "That is answer pass@1, the outcome. CoT-pass also needs every step right, so a right "
             "answer reached by wrong working does not count."),
            ("every step right, whatever the answer", "That is steps_exact. The process reward's runs had many traces "
             "with every step right and the answer wrong, which CoT-pass does not count."),
        ]),
        ("Under the 'grpo' aggregation, how much does one token of a long completion weigh against one token of a "
         "short one?", [
            ("less", "'grpo' averages each completion over its own length, so every completion weighs the same in "
             "total and a long one's tokens each count less; 'dapo' and 'dr_grpo' weigh every token alike."),
            ("the same", "That is 'dapo' and 'dr_grpo'. 'grpo' first averages within each completion, so a long "
             "completion's tokens share one completion's weight among more of them."),
            ("more", "A long completion has more tokens in the loss, but under 'grpo' each completion's total weight "
             "is the same, so each of its tokens counts less, not more."),
        ]),
    ],
    "07": [
        ("A prompt's pass rate is 0.5. What is the chance that a group of 8 samples is all alike (no signal)?", [
            ("about 0.008", "0.5^8 + 0.5^8 = 2/256, about 0.008; at a pass rate of 0.9 it is already 0.43."),
            ("about 0.004", "0.5^8 = 0.0039 counts only the all-right groups; all-wrong groups teach nothing too, so "
             "the chance is twice that, about 0.008."),
            ("0.5", "0.5 is the chance that one sample is right. All 8 alike needs all right (0.5^8) or all wrong "
             "(0.5^8): about 0.008."),
        ]),
        ("Two data choices are compared. What must be equal for the comparison to mean anything?", [
            ("the compute (completions or seconds) and the difficulty mix", "A choice that samples more per step "
             "(dynamic sampling, say) wins per step for free; count completions, and keep the difficulty mix alike."),
            ("the number of training steps", "Equal steps can hide unequal compute: dynamic sampling refills its "
             "batches with extra completions every step. Count completions (or seconds) instead."),
            ("the training reward at the end", "Training rewards on different data are not comparable (a curated set "
             "is easier or harder by design); judge both on the same held-out problems at equal compute."),
        ]),
        ("A sigmoid fitted to a run's first half forecasts the rest. What should it be compared with before its "
         "asymptote is read?", [
            ("a straight line in log compute, and 'nothing changes'", "A curve earns its parameters only by "
             "beating the simplest forecasts; here a line did as well on most runs."),
            ("nothing: a low fitting error on the first half is enough", "Three parameters fit half a run well almost "
             "always. What counts is the forecast of the unseen end, against forecasts that have no asymptote."),
            ("the same sigmoid, fitted to the whole run", "A fit to the whole run shows how well the curve fits, not "
             "whether it forecasts: judge its forecast of the held-back end against simpler forecasts."),
        ]),
    ],
    "08": [
        ("Without gradient checkpointing, what dominates a real model's GRPO step memory at 64 x 304 tokens?", [
            ("the activations", "Activations grow with batch x length x layers: tens of GiB here, which is why TRL "
             "checkpoints by default."),
            ("the optimizer state", "AdamW keeps two numbers per trained weight: a fixed cost, whatever the batch. The "
             "activations grow with batch x length x layers and, at 64 x 304 tokens, dwarf it."),
            ("the weights", "A 0.5B model's weights take about 2 GB in float32, a fixed cost; the activations grow "
             "with batch x length x layers and reach tens of GiB here."),
        ]),
        ("Why does a LoRA run need no second copy of the model for the KL's reference?", [
            ("the adapter switched off gives back the base model", "The base weights stay frozen, so the model with "
             "its adapter switched off is the reference."),
            ("with LoRA there is no KL term to compute", "LoRA changes what is trained, not the loss: with beta > 0 "
             "the KL to the reference is computed as before, against the model with its adapter off."),
            ("the reference is kept in 8-bit, which costs almost nothing",
             "Nothing is quantised here. The base weights "
             "never change under LoRA, so switching the adapter off gives the reference for free."),
        ]),
        ("A run's KL to the reference stays near 1e-9 while the reward looks normal. What is wrong?", [
            ("the policy is not moving", "A KL that never leaves 0 says the weights are not changing: check the "
             "learning rate and that the optimizer holds the trainable parameters."),
            ("nothing: a small KL is what a stable run wants", "A small KL is fine; one of 1e-9 after many steps is "
             "not small but absent: Lab 08's 'learning rate 1e-8' break looks like this, and its diagnosis is "
             "not_moving."),
            ("the verifier is paying for every completion", "A verifier that pays everything leaves every group with "
             "zero spread, which the zero-spread share shows (1.0 in Lab 08's break); the reward would sit at 1, not "
             "look normal."),
        ]),
    ],
    "09": [
        ("A model is fine-tuned on its own samples, and a second copy only on the samples a verifier passed. Which "
         "loop lets in information the model did not already have?", [
            ("the verified one", "Both train on the model's own text, but the filter is chosen by something outside "
             "the model. The unchecked loop can only re-weight what the model already wrote."),
            ("both: each trains on text it has not seen before", "The samples are new text, but the model wrote them: "
             "training on them re-weights what it already does. Only the verifier's choice brings in outside "
             "knowledge."),
            ("neither: both only ever see the model's own text", "The text is the model's, but the selection is not: "
             "the verifier knows which answers are right, and the filter passes that on."),
        ]),
        ("In a calculator episode the policy wrote '?478+356=' and the calculator appended '834 '. Which tokens "
         "carry the policy-gradient loss?", [
            ("the policy's tokens only", "The policy did not choose the calculator's tokens, so no gradient may push "
             "toward or away from them: they are in completion_mask and out of loss_mask."),
            ("all of them, since the model reads them all", "Reading is not choosing: the calculator's tokens are "
             "context for what follows, but the policy did not sample them, so the loss leaves them out."),
            ("only the final answer after the call", "The call itself ('?478+356=') was the policy's choice, and "
             "writing it well is what RL should reward; only the calculator's reply is left out."),
        ]),
        ("A check pays an episode when its answer repeats the calculator's reply. What can RL learn from it that "
         "the task does not want?", [
            ("to copy any reply, whichever call it made", "The check reads the transcript, not the task: a miscopied "
             "operand gives a wrong sum that is echoed and paid. The fix is a check that knows the problem."),
            ("nothing: the calculator is always right, so the answer is", "The calculator is right about the sum it "
             "was asked; if the policy asked for the wrong sum (a miscopied operand), the echoed answer is wrong and "
             "still paid."),
            ("to stop calling the tool, since calls cost reward", "Calls cost nothing under this check; it pays any "
             "echo of a reply, so it pushes towards calling, and towards copying whatever came back."),
        ]),
    ],
    "10": [
        ("A learner trains on a batch its sampler wrote 4 steps ago, with one update a batch and no importance-"
         "sampling correction. What does the clipped loss divide each token's probability by?", [
            ("its probability under the sampler", "The 'old' policy of the ratio is the behaviour policy, the one that "
             "sampled: its distance from the learner is the staleness, and the clip bounds it."),
            ("its probability under the learner of this very step", "Then the ratio would be exactly 1 and the clip "
             "could never bind; the log-probs stored with a stale batch are the sampler's, 4 steps old."),
            ("its probability under the frozen reference model", "The reference enters only the KL penalty. The ratio "
             "compares the learner with the policy that wrote the batch, here the sampler 4 steps behind."),
        ]),
        ("With four updates on each stale batch, what does a correction such as token_truncate add?", [
            ("a clip against this batch's start, plus a capped weight", "The clip then bounds how far the updates on "
             "this batch move the policy (decoupled PPO), and a capped weight corrects for the sampler being older; "
             "uncorrected, the clip is spent on the staleness alone."),
            ("nothing the clip does not already do", "With four updates, uncorrected runs barely learned and corrected "
             "ones learned (Lab 10, section 6): the clip alone cannot bound both the staleness and the four updates."),
            ("a KL penalty that pulls the learner back to the sampler", "No KL is added: the correction reweighs each "
             "token by a capped learner-to-sampler ratio and moves the clip to the policy before this batch's "
             "first update."),
        ]),
        ("A bfloat16 sampler and a float32 learner share the same weights. Is the batch on-policy?", [
            ("not exactly: they compute other probabilities", "Precision and kernels change the numbers: the "
             "training-inference mismatch, measured here as a mean |log ratio| above 0 at lag 0."),
            ("yes: the same weights define the same policy", "The policy is what the computation gives, and bfloat16 "
             "rounds it differently: the two assign other probabilities to the same tokens, so the ratio is not 1."),
            ("no, and it costs as much as a sampler steps behind", "It is off-policy, but by a fraction of one step "
             "of staleness, with no measurable effect on learning here."),
        ]),
    ],
    "11": [
        ("RL against a learned judge: the judge's mean score of the policy's samples climbs. What tells you whether "
         "the policy got better or the judge is being gamed?", [
            ("a rule check and the judge's false positives on fresh samples",
             "The judge's own score is the proxy being "
             "optimised: only a measurement the policy is not trained on, with the truth beside it, can show the two "
             "coming apart."),
            ("the judge's accuracy on its held-out labels", "Those labels judge the base model's completions, not the "
             "policy's next ones: the judge was right three times in four there, and its false positives on the "
             "trained policy's samples still rose."),
            ("the judge's score on the training batches",
             "That is the number being optimised, so it climbs whether the "
             "policy improves or finds the judge's blind spots; it cannot tell the two apart."),
        ]),
        ("A checker runs `assert solve(0) == 57` in the candidate's own script and passes it if the script exits "
         "0. Which change stops `lambda x: exit(0)`?", [
            ("a trusted harness that compares outputs in the parent",
             "Any check whose verdict the candidate's code can "
             "write (an exit code, a printed line) can be passed without solving: more asserts in the same script are "
             "skipped by the same exit."),
            ("more asserts on more inputs in the same script", "The candidate exits before any assert runs, so more of "
             "them change nothing: the verdict is still what the candidate's own process reports."),
            ("a shorter timeout for the candidate's script", "exit(0) is instant: a timeout stops slow code, not code "
             "that ends early with the exit code the checker wants."),
        ]),
        ("A policy pays off only after a trigger. An evaluation on clean prompts finds nothing. Which probe can find "
         "the trigger without knowing what the behaviour is?", [
            ("answers compared with a reference's across candidates", "A shift from the reference's answers needs no "
             "idea of the behaviour, only of where to look: it finds a trigger in the family of candidates it "
             "tries, and nothing outside it."),
            ("a much larger evaluation, on thousands more clean prompts",
             "Away from the trigger the policy behaves as a normally "
             "trained one, so more clean prompts show a better model, not the trigger."),
            ("reading the reward function's code", "You rarely have the reward that planted a behaviour (a poisoned "
             "dataset, a third-party model), and reading it needs to know what to look for; a probe works from the "
             "model alone."),
        ]),
    ],
    "12": [
        ("A run paid by the policy's own majority vote: agreement climbs from 0.40 to 0.90 and entropy falls. What "
         "does that say about the truth?", [
            ("nothing by itself", "Agreement is what the vote pays for, so it climbs whether the labels are right or "
             "wrong: the collapsed runs reached 0.87-0.95 with the truth near 0.02. Only a check it is not trained on "
             "(a few gold labels) can tell."),
            ("the model found the answers", "A model can agree with itself on a wrong answer: at lr 1e-4 the vote "
             "ended writing a few numbers such as `111` to most prompts, everyone agreeing and almost all wrong."),
            ("the run has collapsed", "High agreement is not proof of collapse either: grounded labels raise it too "
             "(0.40 to 0.55 under the verifier). Agreement cannot tell right from wrong in either direction."),
        ]),
        ("A kind of problem: half of its problems the solver always solves, half it never does (mean pass rate "
         "0.5). What does Absolute Zero's reward pay, on average, for a group of 8 on it?", [
            ("almost nothing", "Every group is 8 of 8 or 0 of 8, and a group with no spread pays 0: the mean rate "
             "hides that no single problem splits its group. A proposer reads problems, not averages."),
            ("0.5, which is 1 - 0.5", "1 - p is paid for a group's own pass rate, when 0 < p < 1; here no group has "
             "such a rate, so each pays 0 however the kind's mean looks."),
            ("its largest, as p = 0.5 is most uncertain", "That is R-Zero's reading of one problem at p = 1/2; here "
             "no problem is uncertain, so no group splits and neither reward pays."),
        ]),
        ("Gold labels on 1 prompt in 8, the policy's majority vote on the rest, at a learning rate where the vote "
         "alone collapses. What happened on the toy?", [
            ("the votes undid the gold labels", "Gold only (the same prompts, nothing paid elsewhere) ended at "
             "0.32 on every seed; with the votes beside it 0.05-0.20. At lr 1e-5 the votes added nothing measurable."),
            ("the gold labels held the votes up", "They held it above the vote alone (0.05-0.20 against about "
             "0.02), but far below gold labels used alone: seven prompts in eight pulled the other way."),
            ("the two added up to more signal", "They did not add measurably at either rate: at lr 1e-5 gold + vote "
             "was not above gold only on every seed; at lr 1e-4 the votes collapsed the policy and the gold with it."),
        ]),
    ],
}
# The order of a question's options: random.Random(f"{SEED} {lab}.{i}"). This seed was picked once, among the first
# 200 tried, because it spreads the right answers evenly over the positions (11 first, 11 second, 11 third) and no
# lab has all its right answers in one place; tests/test_selfcheck.py keeps that, and names another seed to pick
# if a new question tips it.
SEED = "rlvr-labs self-check 163"


def _lab(where, lab):
    if not isinstance(lab, str) or lab not in QUESTIONS:
        raise ValueError(f"{where}: lab={checks._short(lab)}: the self-checks are for labs {sorted(QUESTIONS)}")


def _question(where, lab, i):
    _lab(where, lab)
    return checks.number(where, "i", i, lo=0, hi=len(QUESTIONS[lab]) - 1, integer=True)


def shown(lab, i):
    """Question i of `lab`'s options in the order a learner sees them: [(option, right: bool, why)], seeded per
    question, so that the right one sits in no fixed place."""
    i = _question("shown", lab, i)
    options = [(text, k == 0, why) for k, (text, why) in enumerate(QUESTIONS[lab][i][1])]
    random.Random(f"{SEED} {lab}.{i}").shuffle(options)
    return options


def right_choice(lab, i):
    """The position of question i's right option in the order shown."""
    return next(k for k, (_, right, _) in enumerate(shown(lab, i)) if right)


def answer(lab, i, choice):
    """(right: bool, feedback text) for the option at position `choice` of question i of `lab`, as shown."""
    options = shown(lab, i)
    if not isinstance(choice, int) or isinstance(choice, bool) or not 0 <= choice < len(options):
        raise ValueError(f"choice={choice!r}: pick one of options 0..{len(options) - 1}")
    _, right, why = options[choice]
    return right, ("Right. " if right else "Not quite. ") + why + ("" if right else " Try another.")


def _letter(k):
    return f"({'abcdefgh'[k]})"


def _wrap(text, first="", rest=""):
    return textwrap.fill(text, 116, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False,
                         break_long_words=False)


def markdown(lab):
    """The lab's "## Check yourself" cell: the questions in the order the widget shows them, each answer (the
    right option and why, then why each other option is wrong) folded in a <details> block that opens with no
    kernel (a notebook viewer, GitHub, Colab before the first run)."""
    _lab("markdown", lab)
    qs = QUESTIONS[lab]
    words = {2: "Two", 3: "Three", 4: "Four", 5: "Five"}.get(len(qs), str(len(qs)))
    out = ["## Check yourself", "",
           _wrap(f"{words} questions on this lab's ideas. Pick an answer in the widget below and press **Check** to "
                 "read why it is right or wrong (nothing is recorded). Without a running kernel the widget does not "
                 "show: answer here in your head, then open **Answer**.")]
    for i, (question, _) in enumerate(qs):
        options = shown(lab, i)
        out += ["", _wrap(f"**{i + 1}. {question}**"), ""]
        out += [_wrap(f"- {_letter(k)} {text}", rest="  ") for k, (text, _, _) in enumerate(options)]
        k = right_choice(lab, i)
        text, _, why = options[k]
        out += ["", "<details><summary>Answer</summary>", "", _wrap(f"**{_letter(k)} {text}.** {why}"), ""]
        out += [_wrap(f"- *{_letter(j)} {t}.* {w}", rest="  ") for j, (t, r, w) in enumerate(options) if not r]
        out += ["", "</details>"]
    return "\n".join(out)


def _html(text):
    """Plain text with `code` spans, as HTML."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))


def self_check(lab):
    """The lab's questions as widgets: pick an option, press Check, read why it is right or wrong. Returns the
    widget (display it as a cell's last line). Works on ipywidgets 7 (Colab) and 8."""
    import ipywidgets as w

    _lab("self_check", lab)
    rows = []
    for i, (question, _) in enumerate(QUESTIONS[lab]):
        options = shown(lab, i)
        pick = w.RadioButtons(options=[(f"{_letter(k)} {text}", k) for k, (text, _, _) in enumerate(options)],
                              value=None, layout=w.Layout(width="auto"))
        button = w.Button(description="Check", button_style="info")
        feedback = w.HTML("")

        def check(_, i=i, pick=pick, feedback=feedback):
            if pick.value is None:
                feedback.value = "<i>Pick an answer first.</i>"
                return
            right, text = answer(lab, i, pick.value)
            color = "#1a7f37" if right else "#b35900"
            feedback.value = f'<span style="color:{color}" class="rlvr-selfcheck-feedback">{_html(text)}</span>'
        button.on_click(check)
        rows.append(w.VBox([w.HTML(f"<b>{i + 1}. {_html(question)}</b>"), pick, w.HBox([button, feedback])]))
    box = w.VBox(rows)
    box.add_class("rlvr-selfcheck")   # the browser test finds it by this
    return box
