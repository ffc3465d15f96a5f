# argparse names the program after sys.argv[0] and exits 2 on bad arguments.
import argparse, sys
parser = argparse.ArgumentParser(description="demo")
parser.add_argument("--n", type=int, default=3)
args = parser.parse_args([])
print(args.n, parser.prog)
parser.print_help()
sys.argv[1:] = ["--n", "x"]
parser.parse_args()
