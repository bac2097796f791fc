"""What the numbers mean: per-op metrics, advice and the guides, reasons, iterations, trust."""
