# Any object: its str() goes to stderr.
class Reason:
    def __str__(self):
        return "custom reason ✓"
raise SystemExit(Reason())
