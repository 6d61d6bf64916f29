"""RLVR Labs: the small library the notebooks import. One concept per module."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(ROOT, "data")
BASE_MODEL_DIR = os.path.join(DATA_DIR, "base_model")
