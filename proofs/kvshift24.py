"""kvshift24 claims (registered; filled in by its issue)."""

CLAIMS: list = []
