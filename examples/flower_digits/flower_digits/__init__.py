"""flower_digits: a small PyTorch Flower app on scikit-learn's 8x8 digits (offline)."""
