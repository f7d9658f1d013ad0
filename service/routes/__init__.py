"""One router per resource; HTTP only (parsing and shaping), no numerics."""
