"""tfconfig package."""
