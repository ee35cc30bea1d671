"""gatec's Python tools (python -m gatec.export: transformers models with
linear-attention recurrences to ONNX with a symbolic sequence length)."""
