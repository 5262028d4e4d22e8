"""Who may do what in a team (roles), what they did (the audit log) and the tokens a team hands out."""
