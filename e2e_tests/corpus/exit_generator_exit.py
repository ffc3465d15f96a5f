# GeneratorExit is a BaseException; uncaught at top level it is an error.
raise GeneratorExit("closing")
