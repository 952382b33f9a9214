-- Truck, fastest: car with the truck's size and weight limits, hgv access, max 80 km/h.
local Wrap = require('rs_wrap')
return Wrap.profile('car', {Wrap.truck}, {truck = true})
