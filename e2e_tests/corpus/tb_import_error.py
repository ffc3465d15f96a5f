import json
from json import no_such_thing
