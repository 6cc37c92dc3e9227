#!/usr/bin/env python3
"""Time Corrfunc's DDtheta_mocks (one thread) on all 138 322 IC86-2011 events with the benchmark's
20 bins to 5°, for docs/performance/sky.md. Needs `pip install Corrfunc` (and GSL to build it).
Corrfunc counts ordered pairs and, with a 0 lower edge, the N self-pairs: N(≤θ) = (cumsum − N)/2."""
import os
import numpy as np, time
from Corrfunc.mocks.DDtheta_mocks import DDtheta_mocks
d=os.environ.get('WARPDRIVE_DATA', '../shared/data')+'/events/ic86_2011_ps_release/'
a=np.vstack([np.loadtxt(d+'upgoing_events.txt',skiprows=1),np.loadtxt(d+'downgoing_events.txt',skiprows=1)])
ra=a[:,3].astype(np.float64); dec=a[:,4].astype(np.float64)
bins=np.linspace(0,5,21)
rng=np.random.default_rng(1)
for label,r in [("observed",ra),("scrambled",rng.uniform(0,360,len(ra))),("scrambled2",rng.uniform(0,360,len(ra)))]:
    ts=[]
    for k in range(3):
        t=time.perf_counter(); res=DDtheta_mocks(1,1,bins,r,dec); ts.append(time.perf_counter()-t)
    n=(np.cumsum(res['npairs'])-len(ra))/2
    print(label, "best %.3f s, median %.3f s"%(min(ts),sorted(ts)[1]), "N(<=5)=%d N(<=1)=%d"%(n[-1],n[3]))
