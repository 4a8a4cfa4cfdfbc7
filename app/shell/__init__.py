"""The main window: layout, menus, child windows, drop and open, start-up."""
