"""Reusable widgets: token view, sampling panel, model picker, branch menu."""
