"""The in-house hospital desk (see ``desk``)."""
