# A traceback through a module the script wrote into its work dir and imported.
with open("helper.py", "w") as f:
    f.write("def explode(x):\n    return x['nope']\n")
import helper
helper.explode({})
