"""Long-term memory storage on the ORM and its API."""
