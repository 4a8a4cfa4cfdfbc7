"""The playground's own views: prompt, answer and conversation, status line, run view."""
