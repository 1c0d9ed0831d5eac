"""Scripts that reproduce the published results; each is a thin layer over ``runner``."""
