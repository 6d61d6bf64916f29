"""What only the notebooks need: exercise checks, plots, widgets."""
