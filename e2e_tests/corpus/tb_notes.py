e = ValueError("with notes")
e.add_note("first note")
e.add_note("second note\nspanning lines")
raise e
