-- Pedestrian, shortest: the stock foot profile weighted by distance.
local Wrap = require('rs_wrap')
return Wrap.profile('foot', {Wrap.shortest})
