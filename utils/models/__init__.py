"""Models: loading a policy and its tokenizer, batched sampling, completion log-probs; the script that
builds the shipped base model."""
