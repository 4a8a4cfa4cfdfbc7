"""Qt adapters every feature shares: the engine bridge, the session model's Qt
signals, theme, settings store, quit, accessibility."""
