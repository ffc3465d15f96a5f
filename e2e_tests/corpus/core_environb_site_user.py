# os.environb and posix.environ are the same environment as os.environ, and site's user paths
# follow the run's HOME.
import os
import posix
import site

print(dict(os.environb) == {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()})
print(posix.environ == dict(os.environb))
home = os.path.expanduser("~")
print(site.getuserbase() == os.path.join(home, ".local"))
print(site.getusersitepackages().startswith(os.path.join(home, ".local", "lib")))
