"""The logical plan (`plan`), the rules that decide it (`rules`) and the
builder that applies them (`build`)."""
