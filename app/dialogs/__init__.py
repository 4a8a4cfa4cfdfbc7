"""Modal dialogs: load options, servers, prices, About, file choosers."""
