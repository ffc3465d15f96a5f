inner = ExceptionGroup("inner", [KeyError("k"), OSError(2, "No such file")])
raise BaseExceptionGroup("outer", [inner, ValueError("v")])
