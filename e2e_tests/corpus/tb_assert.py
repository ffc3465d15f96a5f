x = [1, 2, 3]
assert len(x) == 4, f"expected 4 items, got {len(x)}"
