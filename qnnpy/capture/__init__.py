"""Front ends that turn a PyTorch model into a graph with example values."""
