import multiprocessing as mp, os
print(mp.cpu_count() == os.cpu_count(), mp.cpu_count() >= 1)
