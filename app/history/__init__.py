"""History: the journal's sessions and runs, reopened without the model."""
