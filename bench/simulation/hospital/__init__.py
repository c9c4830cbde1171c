"""The hospital scenario library (issue 21): its file format and loader (``library``), the SQLite tool backend one
trial's agent talks to (``backend``), the topic-answering scripted caller (``caller``) and the outcome checks on the
database, the tool calls and the conversation (``checks``)."""
