"""Per paper one runner doing the whole job (run, resume, write the files), returning a typed result."""
