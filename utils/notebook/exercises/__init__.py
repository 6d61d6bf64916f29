"""Exercise checks, one module per lab: labNN.py holds Lab NN's checks, their worked cases and private helpers
(lab01 ... lab12); common.py holds ExerciseError and the comparison helpers every lab shares. Every name is
re-exported here, so `from utils.notebook.exercises import check_...` works whichever module holds it.

Each check runs the learner's function on small worked cases and returns the function to use for the rest of
the lab:

- not written yet (raises NotImplementedError): prints a visible note and returns the
  reference implementation, so the lab still runs top to bottom;
- wrong: raises ExerciseError saying what differs (shape or values, on a small case);
- right: prints a tick and returns the learner's function.

Each check runs its worked cases (the explanation) and then many small generated ones, compared with the reference,
seeded per student (RLVR_LABS_STUDENT). Graded mode (RLVR_LABS_GRADED=1, tools/grade.py) makes an unwritten exercise a
failure instead of the reference fallback.
"""
from utils.notebook.exercises.common import GRADED_ENV, STUDENT_ENV, ExerciseError
from utils.notebook.exercises.common import _graded_verdict as graded_verdict  # tools/grade.py, otter tests
from utils.notebook.exercises.common import _passes as passes
from utils.notebook.exercises.lab01 import (
    UNBIASED_STD_MESSAGE,
    check_completion_logprobs,
    check_group_advantages,
    check_policy_loss,
)
from utils.notebook.exercises.lab01 import _row_by_row_logprobs as _row_by_row_logprobs  # tests use these two
from utils.notebook.exercises.lab01 import _tiny_gpt2 as _tiny_gpt2
from utils.notebook.exercises.lab02 import (
    HIDDEN_ARITHMETIC_CASES,
    breaking_cases,
    check_breaking_cases,
    check_careful_match,
)
from utils.notebook.exercises.lab03 import check_control_check, check_random_reward
from utils.notebook.exercises.lab04 import check_health_check, check_token_entropy
from utils.notebook.exercises.lab05 import check_pass_at_k
from utils.notebook.exercises.lab06 import STEP_CASES, check_step_credit, check_token_weights
from utils.notebook.exercises.lab07 import (
    FILL_CASES,
    FIT_CASES,
    SWEET_CASES,
    check_best_asymptote,
    check_fill_batch,
    check_sweet_spot,
)
from utils.notebook.exercises.lab08 import DIAGNOSE_CASES, check_diagnose
from utils.notebook.exercises.lab09 import EPISODE_CASES, VERIFIED_CASES, check_episode_tensors, check_verified_pairs
from utils.notebook.exercises.lab10 import IS_CASES, check_cispo_token_loss, check_importance_weights
from utils.notebook.exercises.lab11 import (
    FPR_CASES,
    RULE_CASES,
    SHIFT_CASES,
    check_answer_shift,
    check_false_positive_rate,
    check_obeys_rules,
)
from utils.notebook.exercises.lab12 import LEARN_CASES, MAJORITY_CASES, check_learnability, check_majority_label

__all__ = [
    "ExerciseError", "GRADED_ENV", "STUDENT_ENV", "graded_verdict", "passes",
    "UNBIASED_STD_MESSAGE", "check_group_advantages", "check_policy_loss", "check_completion_logprobs",
    "HIDDEN_ARITHMETIC_CASES", "check_careful_match", "breaking_cases", "check_breaking_cases",
    "check_random_reward", "check_control_check",
    "check_token_entropy", "check_health_check",
    "check_pass_at_k",
    "STEP_CASES", "check_step_credit", "check_token_weights",
    "SWEET_CASES", "check_sweet_spot", "FILL_CASES", "check_fill_batch", "FIT_CASES", "check_best_asymptote",
    "DIAGNOSE_CASES", "check_diagnose",
    "VERIFIED_CASES", "check_verified_pairs", "EPISODE_CASES", "check_episode_tensors",
    "IS_CASES", "check_importance_weights", "check_cispo_token_loss",
    "FPR_CASES", "check_false_positive_rate", "RULE_CASES", "check_obeys_rules", "SHIFT_CASES", "check_answer_shift",
    "MAJORITY_CASES", "check_majority_label", "LEARN_CASES", "check_learnability",
]
