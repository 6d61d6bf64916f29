"""Recipes that put the layers together: a lab's runs (control.py, traces.py), building the shipped base
models (build_base_model.py) and their data (pass_rates.py)."""
