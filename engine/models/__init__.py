"""Models on disk: the catalogue, the default model, GGUF checks and tokenizer tables."""
