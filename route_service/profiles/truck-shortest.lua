-- Truck, shortest: the truck profile weighted by distance.
local Wrap = require('rs_wrap')
return Wrap.profile('car', {Wrap.truck, Wrap.shortest}, {truck = true})
