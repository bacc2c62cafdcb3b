"""Fair play (issue 28): signals over the match log, flags for admins, their
decisions as events, voided matches and refunds (docs/fairplay.md)."""
