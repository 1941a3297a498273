"""One module per view of the web page; each exposes ``routes``."""
