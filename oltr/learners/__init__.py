"""Online ranking learners, one module per family."""
