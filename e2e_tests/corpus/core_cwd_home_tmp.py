# The work dir is the cwd, $HOME and $TMPDIR.
import os, tempfile, pathlib
print(os.getcwd(), os.environ["HOME"], os.environ["TMPDIR"], tempfile.gettempdir())
print(pathlib.Path.home(), os.path.expanduser("~/x"))
print(sorted(os.environ))
print(os.environ["LANG"], os.environ["PYTHONIOENCODING"], os.environ.get("MPLBACKEND"))
