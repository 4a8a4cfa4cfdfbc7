"""Session logs: the journal, its schema, import and export."""
