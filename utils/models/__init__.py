"""Models: loading a policy and its tokenizer, batched sampling, completion log-probs, memory estimates.
The script that pre-trains the shipped base models is utils/runs/build_base_model.py."""
