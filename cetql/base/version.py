"""cetql's version: written once here (pyproject reads it, `cetql --version` prints it)."""

VERSION = "0.2.0"
