def fail(n):
    raise ValueError(f"bad {n}")
errors = []
for i in range(3):
    try:
        fail(i)
    except ValueError as e:
        errors.append(e)
raise ExceptionGroup("several failures", errors + [TypeError("other")])
