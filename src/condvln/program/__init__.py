"""Conditional programs: the AST, the interpreter, text rendering and parsing."""
