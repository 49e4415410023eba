"""Usage accounting shared by the console and budgets: pure functions, no storage."""
