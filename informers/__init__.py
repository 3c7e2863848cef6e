"""informers package."""
