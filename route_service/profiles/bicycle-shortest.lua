-- Bicycle, shortest: the stock bicycle profile weighted by distance.
local Wrap = require('rs_wrap')
return Wrap.profile('bicycle', {Wrap.shortest})
