import multiprocessing as mp
print(mp.get_start_method(), sorted(mp.get_all_start_methods()))
print(mp.current_process().name, mp.parent_process())
