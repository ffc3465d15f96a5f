# finally blocks run on the way out; the later exit wins.
import sys
try:
    try:
        sys.exit(1)
    finally:
        print("finally ran")
        sys.exit(5)
finally:
    print("outer finally")
