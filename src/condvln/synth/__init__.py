"""Instruction synthesis: referring expressions, condition sampling, balancing, validation."""
