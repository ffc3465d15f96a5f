data = {"alpha": 1, "beta": 2, "gamma": 3, "delta": 4, "epsilon": 5, "zeta": 6, "eta": 7, "theta": 8}; value = data["alpha"] + data["beta"] + data["iota"] + data["gamma"]
